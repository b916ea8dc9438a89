"""Routing in a worker process, so a host (a chat gateway) never imports torch or numpy or waits on a model.

``protocol`` is the wire (each op, status, state and limit defined once),
``server`` the routing process (``python -m semantic_skills.worker``) and
``client`` what the host uses to start, feed and restart it. The host imports
``protocol`` and ``client`` only; both use nothing but the standard library.
"""
