"""calibkit: how far to trust an NLP model's probabilities, and how to fix them.

`import calibkit` loads only the core (config, events, binning, metrics: numpy and pandas). Everything
else (registry, recalibrators, extractors, models, charts, studies, reports, Dask) is imported on first
use through the table below, so a metrics-only script stays light and `calibkit --help` is fast.
"""
__version__ = "0.1.0"

from .config import settings
from .events import events, events_from_scores, top_label_events, as_pairs
from .binning import equal_mass_bins, fixed_width_bins, bin_stats, BinStats
from .metrics import calib_mse, calib_mse_interval, ece, ece_interval, smce, gmce, marginal_ce, top_label_ce, brier, Interval

# public name -> (submodule, attribute); attribute None = the submodule itself. Submodules not listed
# (calibkit.plugins, calibkit.charts, ...) are importable as usual and also reachable as attributes.
_LAZY = {
    'extractor': ('plugins', 'extractor'), 'grouper': ('plugins', 'grouper'), 'recalibrator': ('plugins', 'recalibrator'),
    'Grouped': ('recalibrators', 'Grouped'),
    'crf_marginals': ('extractors.taggers', 'crf_marginals'),
    'coref_mc': ('extractors.coref', 'coref_mc'),
    'token_events': ('extractors.seq2seq', 'token_events'), 'word_events': ('extractors.seq2seq', 'word_events'),
    'sequence_events': ('extractors.seq2seq', 'sequence_events'), 'hard_split': ('extractors.seq2seq', 'hard_split'),
    'read_calibration_metric_logits': ('extractors.seq2seq', 'read_calibration_metric_logits'),
    'read_conll2012_coref': ('datasets.coref', 'read_conll2012_coref'),
    'sparse_study': ('sparse', 'sparse_study'), 'sparse_study_from_scores': ('sparse', 'sparse_study_from_scores'),
    'synthetic': ('studies', 'synthetic'),
    'calibration_report': ('report', 'calibration_report'),
    'smooth_ece': ('diagnostics', 'smooth_ece'), 'smooth_curve': ('diagnostics', 'smooth_curve'),
    'corp': ('diagnostics', 'corp'), 'corp_curve': ('diagnostics', 'corp_curve'),
    'TemperatureScaling': ('multiclass', 'TemperatureScaling'), 'VectorScaling': ('multiclass', 'VectorScaling'),
}
_SUBMODULES = {'plugins', 'charts', 'studies', 'report', 'recalibrators', 'groupers', 'extractors', 'models',
               'datasets', 'sparse', 'inputs', 'cli', 'demos', 'dask', 'diagnostics', 'multiclass'}


def __getattr__(name):
    import importlib
    if name in _SUBMODULES: return importlib.import_module(f'{__name__}.{name}')
    if name not in _LAZY: raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    module, attr = _LAZY[name]
    mod = importlib.import_module(f'{__name__}.{module}')
    return mod if attr is None else getattr(mod, attr)


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)
