"""Every statistic the harness reports, in one place.

robust.py   medians, quantiles, IQR, bootstrap CIs, Mann-Whitney U, Wilcoxon, fits (primitives)
derive.py   summaries and ratios against the baseline, step percentiles, GC rates, parameter
            ratios, scaling fits: computed when a run folder is read, never stored
classify.py the one rule for "faster" / "slower": significant and beyond the A/A noise floor
"""

from __future__ import annotations

from bench.stats.robust import (
    ALPHA,
    BOOTSTRAP_RESAMPLES,
    NOISY_IQR_FRACTION,
    Comparison,
    bootstrap_mean_ci,
    bootstrap_median_ci,
    bootstrap_ratio_ci,
    compare,
    hierarchical_compare,
    hierarchical_median_ci,
    hierarchical_trimmed_ci,
    iqr,
    is_noisy,
    linear_fit,
    loglog_slope,
    mann_whitney_p,
    mean_t_ci,
    median,
    quantile,
    quantile_ratio_ci,
    supports_quantile,
    t975,
    trimmed_mean,
    values_for_quantile,
    wilcoxon_signed_rank_p,
)

__all__ = [
    "ALPHA",
    "BOOTSTRAP_RESAMPLES",
    "NOISY_IQR_FRACTION",
    "Comparison",
    "bootstrap_mean_ci",
    "bootstrap_median_ci",
    "bootstrap_ratio_ci",
    "compare",
    "hierarchical_compare",
    "hierarchical_median_ci",
    "hierarchical_trimmed_ci",
    "iqr",
    "is_noisy",
    "linear_fit",
    "loglog_slope",
    "mann_whitney_p",
    "mean_t_ci",
    "median",
    "quantile",
    "quantile_ratio_ci",
    "supports_quantile",
    "t975",
    "trimmed_mean",
    "values_for_quantile",
    "wilcoxon_signed_rank_p",
]
