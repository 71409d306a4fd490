"""An example third-party calibkit plugin: a `first_char` grouper, a `temperature` recalibrator and a `conf_correct` extractor,
built on calibkit's base classes and registered exactly as `calibkit.default_plugins` registers the built-ins."""
import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit
from calibkit.plugins import hookimpl
from calibkit.groupers import BySubtag
from calibkit.recalibrators import Recalibrator
from calibkit.extractors.base import Extractor
from calibkit.events import make_events


def first_char(tag) -> str:
    return str(tag)[:1]


def logit(c, eps):
    c = np.clip(np.asarray(c, np.float64), eps, 1 - eps)
    return np.log(c) - np.log1p(-c)


class FirstChar(BySubtag):
    "Groups tags by their first character (NN, NNS, NNP -> N)."
    name = 'first_char'
    description = 'Groups tags by their first character (e.g. NN, NNS and NNP together)'

    def __init__(self):
        super().__init__(key=first_char)


class Temperature(Recalibrator):
    "Temperature scaling of the log-odds: sigmoid(logit(conf) / T), T fitted by maximum likelihood."
    name = 'temperature'
    description = 'Temperature scaling: sigmoid(logit(conf) / T) with T fitted by maximum likelihood'

    def __init__(self, eps: float = 1e-6):
        self.eps = eps

    def _fit(self, c, y):
        x = logit(c, self.eps)
        nll = lambda log_t: np.sum(np.logaddexp(0, x / np.exp(log_t)) - y * x / np.exp(log_t))
        self.temperature_ = float(np.exp(minimize_scalar(nll, bounds=(-5, 5), method='bounded').x))

    def _transform(self, c):
        return expit(logit(c, self.eps) / self.temperature_)


class ConfCorrect(Extractor):
    "Events already computed elsewhere: arrays `conf` and `correct`, as a .npz file holds them."
    name = 'conf_correct'
    description = 'Events already computed: arrays conf and correct (e.g. a .npz file), optionally item'
    reads = {'conf': 'the confidence of each event', 'correct': '1 if the event happened, else 0'}
    reads_optional = {'item': 'the item each event belongs to'}

    def extract(self, output, **kw):
        a = self.arrays(output)
        return make_events(a['conf'], a['correct'], **({} if a['item'] is None else {'item': a['item']}))


@hookimpl
def register_extractors(register):
    register(ConfCorrect)


@hookimpl
def register_groupers(register):
    register(FirstChar)


@hookimpl
def register_recalibrators(register):
    register(Temperature)
