"""What a run leaves: summary.json, the result folder and its figures, the headline and
reports (docs/architecture.md, "Layers")."""
