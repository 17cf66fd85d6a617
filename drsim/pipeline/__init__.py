"""The run: the stage sequence of ``simulate`` and ``run`` against the backend interface, one
chunk's task, the passes, loads and evaluation (docs/architecture.md, "Layers")."""
