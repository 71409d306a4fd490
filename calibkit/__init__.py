"""calibkit: how far to trust an NLP model's probabilities, and how to fix them.

`import calibkit` imports nothing heavy: every public name below is imported from its module on first
use (`ck.ece` loads the core, numpy and pandas; `ck.calibration_report` the report and Altair), so a
metrics-only script loads only the core and `calibkit --help` answers at once.
"""
__version__ = "0.1.0"

import importlib as _importlib
from .config import public_dir as _public_dir, settings

# public name -> (submodule, attribute). Submodules (calibkit.plugins, calibkit.charts, ...) are
# importable as usual and also reachable as attributes. `calibkit.events` is the module; its function is
# `make_events`.
_CORE = {'events': ['make_events', 'events_from_scores', 'top_label_events', 'as_pairs'],
         'binning': ['equal_mass_bins', 'fixed_width_bins', 'bin_stats', 'BinStats'],
         'metrics': ['calib_mse', 'calib_mse_interval', 'ece', 'ece_interval', 'ece_sweep', 'smce', 'gmce',
                     'marginal_ce', 'top_label_ce', 'brier', 'Interval'],
         'significance': ['spiegelhalter_test', 'ecce_mad_test', 'ecce_r_test', 'calib_mse_test',
                          'consistency_bands', 'cumulative_differences', 'Significance'],
         'kernel': ['skce', 'skce_test'],
         'paired': ['bootstrap_differences'],
         'selective': ['risk_coverage', 'selective_risk', 'aurc', 'e_aurc', 'augrc', 'auroc', 'prr',
                       'selective_summary'],
         'conformal': ['ConformalSets', 'conformal_scores', 'set_summary']}
_LAZY = {name: (module, name) for module, names in _CORE.items() for name in names} | {
    'extractor': ('plugins', 'extractor'), 'grouper': ('plugins', 'grouper'),
    'recalibrator': ('plugins', 'recalibrator'), 'matrix_recalibrator': ('plugins', 'matrix_recalibrator'),
    'list_plugins': ('plugins', 'plugins'),
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
    'save_report': ('render', 'save_report'),
    'compare': ('comparison', 'compare'), 'recalibrations': ('comparison', 'recalibrations'),
    'save_comparison': ('render', 'save_comparison'),
    'smooth_ece': ('diagnostics', 'smooth_ece'), 'smooth_curve': ('diagnostics', 'smooth_curve'),
    'corp': ('diagnostics', 'corp'), 'corp_curve': ('diagnostics', 'corp_curve'),
    'TemperatureScaling': ('multiclass', 'TemperatureScaling'), 'VectorScaling': ('multiclass', 'VectorScaling'),
    'DirichletCalibration': ('multiclass', 'DirichletCalibration'),
}
_SUBMODULES = {'config', 'events', 'binning', 'metrics', 'plugins', 'charts', 'studies', 'report', 'render',
               'recalibrators', 'groupers', 'extractors', 'models', 'datasets', 'sparse', 'inputs', 'cli', 'demos',
               'dask', 'diagnostics', 'multiclass', 'significance', 'kernel', 'paired', 'selective', 'conformal',
               'stream', 'torchmetric', 'export', 'comparison'}


def __getattr__(name):
    "PEP 562: a submodule, or a public name imported from its module, on first use."
    if name in _SUBMODULES: return _importlib.import_module(f'{__name__}.{name}')
    if name not in _LAZY: raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    module, attr = _LAZY[name]
    return getattr(_importlib.import_module(f'{__name__}.{module}'), attr)


# calibkit's public names (and `__version__`): no imported helper module or private name
__dir__ = _public_dir(globals(), ('settings', '__version__'), _LAZY, _SUBMODULES)

