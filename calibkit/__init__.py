__version__ = "0.1.0"

from .config import settings
from .events import events, events_from_scores, top_label_events, as_pairs
from .binning import equal_mass_bins, fixed_width_bins
from .metrics import calib_mse, calib_mse_interval, ece, ece_interval, smce, gmce, marginal_ce, top_label_ce, brier, Interval
