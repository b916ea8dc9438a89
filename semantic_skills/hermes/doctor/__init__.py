"""``semantic-skills doctor`` and ``uninstall``: a Hermes home checked line by line, and what removes the plugin.

``report`` is the vocabulary (a :class:`~.report.Check`, its statuses, the
:class:`~.report.Setup` every check reads), ``setup_checks`` the Python, its
dependencies, Hermes, the install and the settings, ``routing_checks`` the
index, a real routing worker and the skills offered, ``install_fix`` the one
install command both ``doctor`` and ``register()`` give, and ``removal`` the
commands that remove the plugin from a home.
"""
