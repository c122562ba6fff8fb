"""The gRPC API layer: protobuf <-> core conversion, the error table, the servicers."""
