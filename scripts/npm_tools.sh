# Pinned build tools from the npm registry, installed on first use into .tools/ (gitignored).
# Sourced by scripts/lint_protos.sh, check_clients.sh and check_web.sh.
BUF_VERSION=1.75.0
PROTOBUF_ES_VERSION=2.17.0  # protoc-gen-es; clients/web pins the same @bufbuild/protobuf
TYPESCRIPT_VERSION=5.9.3
TOOLS=.tools
BUF=$PWD/$TOOLS/node_modules/.bin/buf
PROTOC_GEN_ES_PREFIX=$TOOLS/protoc-gen-es  # the path clients/buf-gen/buf.gen.typescript.yaml names

ensure_buf() {
    if [ ! -x "$BUF" ] || [ "$("$BUF" --version 2>/dev/null)" != "$BUF_VERSION" ]; then
        echo "installing @bufbuild/buf@$BUF_VERSION into $TOOLS/"
        npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$TOOLS" \
            "@bufbuild/buf@$BUF_VERSION" >/dev/null
    fi
}

ensure_protoc_gen_es() {
    local bin=$PROTOC_GEN_ES_PREFIX/node_modules/.bin
    if [ ! -x "$bin/protoc-gen-es" ] || [ ! -x "$bin/tsc" ] \
        || [ "$("$bin/protoc-gen-es" --version 2>/dev/null)" != "protoc-gen-es v$PROTOBUF_ES_VERSION" ]; then
        npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$PROTOC_GEN_ES_PREFIX" \
            "@bufbuild/protoc-gen-es@$PROTOBUF_ES_VERSION" "@bufbuild/protobuf@$PROTOBUF_ES_VERSION" \
            "typescript@$TYPESCRIPT_VERSION" >/dev/null
    fi
}

# Generate the TypeScript of protos/ with the user-facing template into $1/gen/typescript.
generate_typescript() {
    ensure_buf
    ensure_protoc_gen_es
    "$BUF" generate protos --template clients/buf-gen/buf.gen.typescript.yaml -o "$1"
}
