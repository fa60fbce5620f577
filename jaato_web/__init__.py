"""Web dashboard for the jaato context garbage collector.

Kept apart from ``gcengine`` so the engine never imports Django and can run in
agents, scripts and benchmarks without a web stack.
"""
