"""Training the weights a parametric memory method answers with (docs/parametric.md):
recipes, training data, trainers on transformers + peft + trl, and content-addressed
artifacts. Everything here imports its optional dependencies (extra: train) only when called."""
