__version__ = "0.1.0"

from .config import settings
from .events import events, events_from_scores, top_label_events, as_pairs
from .binning import equal_mass_bins, fixed_width_bins
from .metrics import calib_mse, calib_mse_interval, ece, ece_interval, smce, gmce, marginal_ce, top_label_ce, brier, Interval
# `calibkit.plugins` stays the module (calibkit.plugins.register_plugin, hookimpl); calling it, calibkit.plugins(),
# lists everything registered. Importing the function `plugins` here would shadow the module.
from . import plugins
from .plugins import extractor, grouper, recalibrator
from .recalibrators import Grouped
from .extractors.taggers import crf_marginals
from .extractors.coref import coref_mc
from .extractors.seq2seq import token_events, word_events, sequence_events, hard_split, read_calibration_metric_logits
from .datasets.coref import read_conll2012_coref
from .sparse import sparse_study, sparse_study_from_scores

# Modules that load Altair are imported on first use, so `import calibkit` stays light for metrics-only use.
_LAZY = {'charts': ('charts', None), 'studies': ('studies', None), 'report': ('report', None),
         'synthetic': ('studies', 'synthetic'), 'calibration_report': ('report', 'calibration_report')}


def __getattr__(name):
    if name not in _LAZY: raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    import importlib
    module, attr = _LAZY[name]
    mod = importlib.import_module(f'{__name__}.{module}')
    return mod if attr is None else getattr(mod, attr)
