"""``gateway_load.py --reference``: LangGraph's own server beside the gateway on the same scripted graph.

``server`` makes the reference's virtual environment and starts ``langgraph dev``, ``graph`` is
the graph it serves, ``process_cost`` reads a server's CPU time and memory, ``compare`` runs
the interleaved rounds and computes the ratios.
"""
