"""The utility's side of the DR program.

M&V, the threshold, what is known at t_nc, the incentive (Eq. 6.5-6.8), the monitoring
queries (Listings 6.1-6.3), load shedding at the gateways, the profiles fetched from the
utility, lost readings and appliance-level queries (docs/architecture.md, "Layers").
"""
