"""Dataset generation: sources -> compile -> split -> dedupe -> autotune -> safety -> dataset.

Entry points: `data_pipeline.job.run_job(JobConfig(...))` and the `llmopt datagen` CLI
(`data_pipeline.cli.add_parser`, which also registers `llmopt feedback-data`,
`data_pipeline.feedback_data`).  Rows are written through the dataset contract, `llmopt.dataset`.
"""
