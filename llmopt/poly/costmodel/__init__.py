"""The Tiramisu cost model (paper 002, issue 16): predict a schedule's speedup, search with it.

The modules, in the order data flows through them:

- `data`: (program, schedule, measured speedup) rows from random programs and random legal
  schedules, measured and memoized by `llmopt.poly.measure.Measurer`; resumable, parallel
  (`python -m llmopt.poly.costmodel.data OUT --programs N ...`), `write_sample` for a committed sample;
- `features`: a (program, schedule) as the model reads it: computation vectors (loop nest with
  transformation tags, access matrices, operation counts) in the loop tree of the transformed
  schedule (`featurize -> Tree`);
- `model`: `CostModel` (computation embedding MLP, recursive LSTM loop embedding, regression head;
  appendix A.1's sizes), `mape`, `save_model` / `load_model`, `predict(model, program, schedule)`;
- `train`: split by program, MAPE + AdamW + one-cycle, checkpoints, resume
  (`python -m llmopt.poly.costmodel.train DATA --out OUT`; `--init-seed` for another start on one split,
  `--init-from MODEL` to fine-tune a saved one);
- `ensemble`: several trained models as one file (`model.Ensemble`, the mean of their log speedups;
  `python -m llmopt.poly.costmodel.ensemble A.pt B.pt --out E.pt`);
- `boosted`: gradient-boosted trees (LightGBM) on the same inputs and `model.Blend`, their blend with a
  network or ensemble, saved and loaded like a cost model
  (`python -m llmopt.poly.costmodel.boosted DATA --network E.pt --out B.pt`);
- `ranker`: `Ranker`, a search's children featurized and answered by the model on this process and a
  forked helper (the machine's other core), merged into the ranking one process gives;
- `search`: `beam_model`, beam search scored by the model with the best predictions verified by
  execution: "beam-model" in `llmopt.poly.search.SEARCHES`; legality is checked lazily, only for
  the children the search keeps;
- `mcts`: `mcts_model`, Monte Carlo tree search scored by the model, verified the same way:
  "mcts-model".

The evaluation against beam search with execution (results.json, scatter plot) is
`eval/costmodel_eval.py`.  torch is imported by `model`, `train`, `search` and `mcts` only; lightgbm by
`boosted`, when trees are trained or a blend is loaded.
"""
