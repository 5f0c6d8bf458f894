"""The catalogue of training objectives.

Each entry is an ``Objective``: a plain per-row JAX loss ``loss(y, pred) -> scalar``
(callable directly) with its inverse link, default metric, default Hessian policy and
leaf refit, and label check beside it. Any plain callable with the same signature works
wherever an entry does. Calling an entry with keyword hyperparameters only returns a
variant, e.g. ``objectives.huber(delta=2.0)``; entries compare and hash by value.

============  ===============  ===============  ===========  ===================  ==============
entry         hyperparameters  link (response)  h sign       hessian / refit      metric
============  ===============  ===============  ===========  ===================  ==============
squared       --               identity         positive     exact / --           rmse
logistic      --               sigmoid          positive     exact / --           logloss
exponential   --               sigmoid(2f)      positive     exact / --           logloss
absolute      --               identity         nonnegative  constant / quantile  mae
huber         delta=1.0        identity         nonnegative  constant / newton    objective
pseudo_huber  delta=1.0        identity         positive     constant / newton    objective
log_cosh      --               identity         positive     constant / newton    objective
quantile      alpha=0.5        identity         nonnegative  constant / quantile  objective
cauchy        scale=1.0        identity         any          expected / --        objective
poisson       max_delta_step   exp              positive     exact / --           poisson_nll
gamma         --               exp              positive     exact / --           gamma_deviance
tweedie       power=1.5        exp              positive     exact / --           objective
focal         gamma=2.0        sigmoid          any          clip / --            logloss
softmax       n_classes=None   softmax (K)      positive     exact / --           mlogloss
gaussian_nll  --               (mean, std)      nonnegative  expected / --        objective
aft           sigma=1.0        exp (time)       nonnegative  exact / --           objective
============  ===============  ===============  ===========  ===================  ==============

"h sign" is the sign of the exact per-row Hessian (its diagonal for vector outputs) on
the loss's domain; "any" marks the non-convex losses (Cauchy beyond ``|r| > scale``,
focal for confidently wrong rows). Each loss's docstring gives its formula, closed-form
g and h, label domain, and why its defaults were chosen. ``softmax`` has ``K`` outputs
(``n_classes``, inferred from the labels when None) and ``gaussian_nll`` two (mean and
log standard deviation). ``aft`` (accelerated failure time) takes event times, or an
interval per row (``y={"lower": ..., "upper": ...}``, ``label_fields``: left-, right-
and interval-censored times), and ``distribution`` (normal, logistic, extreme) and
``clip`` (XGBoost's ranges for g and h) beside ``sigma``; see ``aft_loss``.
``softmax`` also takes ``curvature``: ``"exact"`` (default,
the Hessian, diagonal p (1 - p) per class), ``"xgboost"`` (XGBoost's 2 p (1 - p): use
it to match XGBoost's multi-class models) or ``"abs_residual"`` (|p - y|); see
``softmax_loss``.

Any entry of one output trains on ``T`` targets at once from an ``(N, T)`` label array
(``multi_target``; XGBoost's multi-target models), and ``multi_quantile(levels)``
trains several quantiles of one label in one model (XGBoost's vector
``quantile_alpha``).

Group losses couple the rows of a group (a query, a risk set); each is a
``GroupObjective``, a loss ``loss(y_group, pred_group, mask) -> scalar`` per group
(``jaxboost.engine.groups``) with a closed-form Hessian diagonal, trained with
``train(entry, X, y, group=ids)`` (``cox`` needs no ``group=``: all rows form one
group). ``GROUP_CATALOGUE`` maps their names to them:

==========  =================  ===============  ===========  ===========  ==============
entry       hyperparameters    link (response)  h sign       group=       metric
==========  =================  ===============  ===========  ===========  ==============
ranknet     sigma=1.0          identity         nonnegative  query ids    ndcg@10
lambdarank  sigma=1.0, k=None  identity         nonnegative  query ids    ndcg@10
listnet     --                 identity         nonnegative  query ids    ndcg@10
cox         --                 exp (hazard)     nonnegative  (all rows)   cox-nloglik
==========  =================  ===============  ===========  ===========  ==============

``CATALOGUE`` maps each per-row name to its entry. The softmax inverse link is exported as
``softmax_link`` (``softmax`` is the catalogue entry).

>>> import objectives
>>> objectives.huber(delta=2.0) == objectives.huber(delta=2.0)
True
>>> round(float(objectives.huber(delta=2.0)(0.0, 3.0)), 4)
4.0
"""

from ._base import Objective, identity, sigmoid
from ._base import softmax as softmax_link
from ._group import GroupObjective
from ._link import LINKS, LinkedLoss, attach_link, link_name, resolve_link, with_link
from ._targets import MultiQuantile, MultiTarget, multi_quantile
from ._targets import multi_target as _multi_target
from .classic import exponential, logistic, squared
from .classification import MAX_CLASSES, focal, softmax
from .distributional import gaussian_link, gaussian_nll
from .glm import exp_link, gamma, poisson, tweedie
from .ranking import lambdarank, listnet, ranknet
from .robust import absolute, cauchy, huber, log_cosh, pseudo_huber, quantile
from .survival import aft, cox

CATALOGUE = {
    o.name: o
    for o in (
        squared,
        logistic,
        exponential,
        absolute,
        huber,
        pseudo_huber,
        log_cosh,
        quantile,
        cauchy,
        poisson,
        gamma,
        tweedie,
        focal,
        softmax,
        gaussian_nll,
        aft,
    )
}

GROUP_CATALOGUE = {o.name: o for o in (ranknet, lambdarank, listnet, cox)}


def multi_target(entry, n_targets: int) -> MultiTarget:
    return _multi_target(
        CATALOGUE.get(entry, entry) if isinstance(entry, str) else entry, n_targets
    )


multi_target.__doc__ = _multi_target.__doc__

__all__ = [
    "Objective",
    "GroupObjective",
    "identity",
    "sigmoid",
    "softmax_link",
    "exp_link",
    "gaussian_link",
    "LINKS",
    "LinkedLoss",
    "with_link",
    "attach_link",
    "resolve_link",
    "link_name",
    "CATALOGUE",
    "GROUP_CATALOGUE",
    "MAX_CLASSES",
    "resolve",
    "MultiTarget",
    "multi_target",
    "MultiQuantile",
    "multi_quantile",
    *CATALOGUE,
    *GROUP_CATALOGUE,
]


PEER_NAMES = {
    # XGBoost
    "reg:squarederror": "squared",
    "reg:linear": "squared",
    "reg:absoluteerror": "absolute",
    "reg:pseudohubererror": "pseudo_huber",
    "reg:quantileerror": "quantile",
    "binary:logistic": "logistic",
    "binary:logitraw": "logistic",
    "reg:logistic": "logistic",
    "multi:softprob": "softmax",
    "multi:softmax": "softmax",
    "count:poisson": "poisson",
    "reg:gamma": "gamma",
    "reg:tweedie": "tweedie",
    "survival:cox": "cox",
    "survival:aft": "aft",
    "rank:pairwise": "ranknet",
    "rank:ndcg": "lambdarank",
    # LightGBM
    "regression": "squared",
    "regression_l2": "squared",
    "l2": "squared",
    "mse": "squared",
    "regression_l1": "absolute",
    "l1": "absolute",
    "mae": "absolute",
    "binary": "logistic",
    "multiclass": "softmax",
    "softmax": "softmax",
    "lambdarank": "lambdarank",
    "rank_xendcg": "listnet",
    # scikit-learn (HistGradientBoosting*, GradientBoosting*: ``loss=``)
    "squared_error": "squared",
    "absolute_error": "absolute",
    "log_loss": "logistic",
    # CatBoost (``loss_function=``, compared in lower case)
    "rmse": "squared",
    "logloss": "logistic",
    "crossentropy": "logistic",
    "multiclassonevsall": "softmax",
}
"""XGBoost's, LightGBM's, scikit-learn's and CatBoost's objective names -> the catalogue
entry that trains the same loss (``resolve`` names it in its error; the entries'
defaults may differ, e.g. XGBoost's ``count:poisson`` is ``poisson(max_delta_step=0.7)``
with ``max_delta_step=0.7``)."""


_PEER_TRAINING = {
    "poisson": ", with XGBoost's Hessian as objectives.poisson(max_delta_step=0.7) and "
    "train(max_delta_step=0.7)",
    "pseudo_huber": "; XGBoost trains it with the exact Hessian and no leaf refit "
    "(jaxboost's default: a constant Hessian and a Newton leaf refit), so "
    "train('pseudo_huber', ..., hessian='exact', refit=None) grows XGBoost's trees; "
    "XGBoost starts from one Newton step from 0, jaxboost from the loss's minimiser "
    "(base_margin= sets the start)",
    "logistic": " (two classes; 'softmax' for more)",
    "aft": "; objectives.aft(sigma=..., distribution=...) sets XGBoost's "
    "aft_loss_distribution_scale and aft_loss_distribution, and intervals are "
    "y={'lower': ..., 'upper': ...} (XGBoost's label_lower_bound and label_upper_bound); "
    "XGBoost starts from base_score 0.5 (the margin log 0.5), jaxboost from the loss's "
    "minimiser (base_margin= sets the start)",
}
"""What ``resolve``'s error adds where a peer trains the same loss otherwise than the
catalogue entry's defaults."""


def resolve(objective):
    """A catalogue name -> its entry; entries and callables pass through.

    Raises ``ValueError`` for an unknown name (listing the catalogue) and ``TypeError``
    for anything that is neither a name nor callable.
    """
    if isinstance(objective, str):
        entry = CATALOGUE.get(objective, GROUP_CATALOGUE.get(objective))
        if entry is None:
            peer = PEER_NAMES.get(objective.strip().lower())
            if peer is not None:
                raise ValueError(
                    f"unknown objective {objective!r}: that is another library's name "
                    f"(XGBoost, LightGBM, scikit-learn or CatBoost); jaxboost's catalogue "
                    f"entry for the same loss is {peer!r} (objectives.{peer})"
                    + _PEER_TRAINING.get(peer, "")
                )
            raise ValueError(
                f"unknown objective {objective!r}; catalogue entries: "
                f"{sorted(CATALOGUE)}, group losses: "
                f"{sorted(GROUP_CATALOGUE)}, or pass any callable "
                f"loss(y, pred)"
            )
        return entry
    if not callable(objective):
        hint = ""
        if isinstance(objective, dict):  # xgb.train(params, dtrain)'s habit
            hint = (
                "; a params dict as XGBoost's train takes it goes in as keywords: "
                "jaxboost.train(loss, X, y, **params), with the loss first (a catalogue "
                "name such as 'logistic', or a callable)"
            )
        raise TypeError(
            f"objective must be a callable loss(y, pred) -> scalar or an "
            f"objectives entry, got {type(objective).__name__}{hint}"
        )
    return objective
