"""The engine: arrays in, arrays out, jit-safe, no host I/O.

``round`` holds the one boosting round that ``train`` and ``train_many`` share, and the
compiled program that runs a chunk of rounds for one or many models.
"""
