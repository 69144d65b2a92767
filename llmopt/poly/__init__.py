"""General affine loop nests (Pearl, issue 15): programs, dependences, schedules, legality, C, timing.

The layers, each its own module, each usable without the ones after it:

- `program`: `Program` (statements over tensors, affine domains and accesses), the JSON file format
  (`load_program`, `save_program`, `program_from_dict`), `ProgramError`;
- `polyhedral`: the program's isl objects (`context`, `domains`, `accesses`, `check_bounds`);
- `deps`: `dependences(program) -> Dependences` (RAW, WAR, WAW as isl union maps, value-based);
- `schedule`: `Schedule` (original order + `Transform`s: `Interchange`, `Reversal`, `Skew`,
  `Parallel`, `Tile`, `Unroll`, `Fuse`), `state` (the replayed 2d+1 schedule), `branches`;
- `legality`: `check(program, schedule)`, `Legality` (memoized `is_legal` / `allows` / `mask`);
- `actions`: Pearl's 56 actions (`ACTIONS`, `transform`, `action_mask`);
- `emit`: `program_c(program, schedule)`: isl AST -> C with OpenMP / unroll pragmas and a timing driver;
- `measure`: `Measurer` (compile with clang-19, check against the reference, time, memoize;
  `baseline_o3`, `baseline_polly`, `speedup`, `stats`);
- `benchmarks`: Pearl's Table 3 programs and five PolyBench kernels (`benchmark(name, small)`).

A typical agent step:

    prog = benchmark("heat2d")
    m = Measurer(repeats=30)
    sched = Schedule()
    mask = action_mask(m.legality(prog), sched, branches(state(prog, sched))[0][0])
    sched = sched.then(Parallel("S0", 1))
    reward = math.log(m.speedup(prog, sched), 4)
"""
