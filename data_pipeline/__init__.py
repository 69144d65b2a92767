"""Dataset generation: sources -> compile -> split -> dedupe -> autotune -> safety -> dataset.

Entry points: `data_pipeline.job.run_job(JobConfig(...))` and the `llmopt datagen` CLI
(`data_pipeline.cli.add_parser`).
"""
