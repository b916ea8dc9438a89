"""The system prompt's skills section: a short constant in place of Hermes' listing, on the outgoing request.

``stub`` holds the texts, ``mode`` decides per session whether the stub or
Hermes' own listing goes out (``prompt_mode``, and Hermes' listing while
routing cannot work), ``middleware`` applies it through Hermes' public
``llm_request`` middleware, ``listing`` finds Hermes' listing as the exact bytes
its builder renders for the session, ``decisions`` keeps where it lies for the
session's later requests, ``kept`` tells ``doctor`` when a session kept
Hermes' listing, ``request`` holds the system prompt in each provider request
shape and ``tools_view`` records the session's tools, an input of the offer
rules.
"""
