"""``hitl serve``: the same Textual console, in a browser, with sign-in and roles.

The web server is textual-serve's aiohttp app (:mod:`console.serve.web`) with a
guard in front of every route: one console process per browser connection
(:mod:`console.serve.child`, which runs :class:`console.app.HitlApp` on the
command's store and options), started for the signed-in operator only.

- :mod:`console.serve.config` -- ``[serve]`` of ``hitl.toml``: operators, roles,
  credential hashes (argon2, through argon2-cffi), limits; the bind rule.
- :mod:`console.serve.auth` -- cookie sessions, the failed sign-in limiter,
  the trusted reverse-proxy header.
- :mod:`console.serve.web` -- routes, the sign-in page, the console page.
- :mod:`console.serve.command` -- the ``hitl serve`` click command.

Roles: ``viewer`` (the console runs ``--read-only``: every write key is disabled
and says why, the store is opened read-only) and ``operator``. The signed-in
name is passed to the console process and recorded on every write it makes.
"""
