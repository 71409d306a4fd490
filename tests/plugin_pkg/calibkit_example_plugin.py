"An example third-party calibkit plugin: a `first_char` grouper and a `temperature` recalibrator."
import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit
from calibkit.plugins import hookimpl
from calibkit.groupers import BySubtag
from calibkit.recalibrators import Recalibrator


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


@hookimpl
def register_groupers(register):
    register(FirstChar)


@hookimpl
def register_recalibrators(register):
    register(Temperature)
