"""pytorchlite.jit: tracing, compiling and fusing (see docs/architecture.md).

The pointwise fuser is `pytorchlite.jit._fuser` (FusionSpec, compile_group)."""
