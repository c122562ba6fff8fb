"""The server shell: configuration, interceptors, metrics endpoint, health, reflection."""
