"""The simulation kernel: households, their appliances and EVs in SimPy, vectorised over a
chunk (dissertation §6.3.1; docs/architecture.md, "Layers")."""
