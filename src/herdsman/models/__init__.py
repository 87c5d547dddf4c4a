"""Chat models: the factory for configured models, the scripted model, the embedded local model."""
