"""llmopt: predict LLVM `opt` pass lists with a language model, verified by the real compiler."""

__version__ = "0.1.0"
