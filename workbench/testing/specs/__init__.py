"""One module per op family, each calling ``workbench.testing.op_specs.spec`` for its ops."""
