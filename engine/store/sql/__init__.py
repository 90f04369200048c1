"""What the SQL backends share: one definition, whatever the dialect.

:mod:`engine.store.sqlite` and :mod:`engine.store.postgres` keep the same tables
(each writes its own DDL and migrations: the types and the append path differ)
and read them into the same records. What does not depend on the dialect lives
here, and each backend imports it from here (never from the other backend):

``columns``
    The tables, described once, and the columns each store reads them by.
``cursors``
    Page cursors: the sort key of a page's last row as an opaque string.
``rows``
    Rows read back into records (builds pydantic models: not for the fast paths).
``prepared``
    An event reduced to what the append transaction writes.
``overview``
    The home summary's aggregate statements that read the same in both dialects.
``packing``
    How the large caches (seek checkpoints, snapshots) are stored and read back.

Importing this package imports nothing: the plain-``sqlite3`` fast paths
(``hitl sessions``, ``hitl inbox``) use some of its modules and must not pull in
pydantic or asyncio; the modules that build records say so.
"""
