"""The system prompt's skills section: a short constant in place of Hermes' listing.

``stub`` holds the texts, ``mode`` decides per Hermes home whether the stub
or Hermes' own listing goes out (``prompt_mode``, and Hermes' listing while
routing cannot work), ``wrapper`` applies it on a Hermes whose prompt builder
is the only seam, and ``tools_view`` records the session's tools the prompt
was built with, an input of the offer rules.
"""
