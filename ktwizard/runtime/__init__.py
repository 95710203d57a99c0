"""What is specific to the pinned runtime release (sglang-kt 0.7.2 / kt-kernel 0.7.2), behind one seam.

- `release`: the versions pinned together, the environment variables the runtime really reads, and the ones it does
  not;
- `catalog`: the runtime's own flag table (dumped from `ServerArgs.add_cli_args`) every rendered flag is checked
  against;
- `rules`: the load-time and start-up rules read from the runtime's model, loader and kernel code (attention backends,
  FP8 block shards, recorder support, loaders per method, health probes), each citing the wheel's file:line.

The next runtime release starts here: its facts replace these modules; nothing else should need a grep.
"""
