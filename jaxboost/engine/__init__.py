"""The engine: arrays in, arrays out, jit-safe, no host I/O (except the bin edges'
quantiles, computed on the host once per data set).

The second stage of data -> engine -> training -> booster -> io/adapters: it receives
validated arrays and hyperparameters (``jaxboost.inputs``, ``jaxboost.model.params``)
and returns trees as arrays; ``jaxboost.training`` drives it round by round, and its
dtypes are named in ``jaxboost._types``.

The data's journey, one module per stage:

* ``binning``: raw features -> uint8 bins (quantile edges, a bin reserved for missing);
  ``sparse``: the same column by column for a ``scipy.sparse`` X (absent = missing);
* ``autodiff``: a per-row loss -> per-row g and h (Hessian policies, the base margin,
  the split of a loss into its compiled family and traced hyperparameters);
  ``groups``: the same for group losses (ranking, Cox); ``exact``: g and h on a
  quantization grid (order-free sums);
* ``histogram``: g and h summed per (feature, node, bin) (pure JAX; the native C++
  kernel in ``jaxboost.native`` honours the same contract);
* ``split``: gains and the best split per node, leaf values (``smallmat``: the ``K x K``
  Cholesky solves of vector leaves, and the eigendecompositions of the Hessian
  policies, in plain array operations); ``categorical``: the
  candidates of categorical features (one-vs-rest, sorted partitions) and their sets;
  ``constraints``: monotone and interaction constraints and a row minimum per child, as
  hooks of ``grow``;
* ``grow``: one level-wise tree (the level loop, routing, gamma pruning);
* ``sampling``: row (Bernoulli or bootstrap) and column draws from one seed;
* ``refit``: leaf values re-solved on the true loss;
* ``replay``: a finished run replayed with its structures fixed, its leaf values as
  functions of the hyperparameters (for ``jaxboost.tuning``'s hypergradients);
* ``tree``: trees as heap-layout arrays, routing and prediction;
* ``compile``: XLA compile options per backend (``backend_jit``: the CPU round program
  without the fusion emitters, which compile slower and run it no faster);
* ``round``: the one boosting round that ``train`` and ``train_many`` share (a forest of
  ``num_parallel_tree`` trees per output when asked), and the compiled program that runs
  a chunk of rounds for one or many models.
"""
