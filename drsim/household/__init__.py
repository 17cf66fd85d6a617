"""The simulation kernel: households, their appliances and EVs in SimPy.

The kernel is vectorised over a chunk of households (dissertation §6.3.1;
docs/architecture.md, "Layers").
"""
