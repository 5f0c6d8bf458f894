"""What comes in: the checks at the public boundary, which say what was wrong and what
was expected.

One module per kind of input: ``numbers`` (hyperparameters, counts and seeds:
``check_int``, ``check_real``), ``arrays`` (``X``, ``y``, weights, side data and offsets
as checked float32 arrays), ``frames`` (pandas and polars DataFrames: values, column
names and their check against a model's), ``sparse`` (``scipy.sparse`` features, absent
entries missing) and ``categorical`` (which columns are categorical, and their labels
recoded to the model's codes). The inputs import nothing of jaxboost but its errors.
"""
