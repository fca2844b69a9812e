"""scripts/bench: what tests must not time, each case against a baseline taken in the same run.

Modules, each with one job:
- settings: the options (environment variables) and the sizes they imply;
- procs: processes and /proc readings (alive, stop, kill a tree, RSS, CPU seconds);
- world: the bench's world: build, seed, the server of the backend being measured, the mount;
- servers: one class per backend (sitefs-server, Apache mod_dav): starting it on the seed,
  sign-in, its request log, checks of what it holds, the curl baselines' requests in its protocol;
- measure: timing a command, medians, per-operation daemon figures, the result rows;
- cases: the cases, each a function of the world and the recorder, written once for every backend;
- desktop: Xvfb, a private session bus, a home and Files (Nautilus) for the files-window case;
- load: the server-load case, on stores and servers of its own (not the seed): sitefs-server
  under wrk on SQLite and PostgreSQL, one and two instances, with a throwaway PostgreSQL
  cluster of its own;
- crossing: server-load's last step, on its two instances: a change made through one reaching
  a mount of the other, long-poll vs polling, and the idle mount's change-feed requests;
- extract: the server's document text extraction (search) of a 50-page .odt and .pdf,
  timed in-process by the test bundle's harness against inflating alone and pdftotext alone;
- report: the table, the JSON result file kept per run, and comparing two runs;
- cli: `run` (default), `compare`, `list`.
"""
