"""The model: what training makes and what prediction needs.

``booster`` holds ``Booster``, a trained ensemble with what prediction needs beside the
trees (bin edges, base margin, link, feature names and categories), and predicts;
``params`` its validated tree hyperparameters (``TreeParams``: static ones that fix
shapes, traced ones passed as scalars); ``explain`` reads a model without changing it
(SHAP values, importances, text dumps). Training makes a model and ``jaxboost.io``
writes and reads one; the model imports neither.
"""
