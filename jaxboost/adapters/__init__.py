"""The public API adapted to other tools and habits, each above everything it uses.

``sklearn``: scikit-learn estimators (``JaxBoostRegressor``, ``JaxBoostClassifier``);
``compare``: several losses trained with one tree budget and compared on held-out
metrics; ``plotting``: learning curves, importances and single trees with matplotlib;
``cli``: the command line (``python -m jaxboost``). Users import them by their stable
paths (``jaxboost.sklearn``, ``jaxboost.plotting``, ...).
"""
