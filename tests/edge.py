"Edge data every metric must answer with a finite value or a clear error (never NaN): shared by the metric test files."
import numpy as np

EDGE = {
    'all correct': (np.linspace(.3, 1, 20), np.ones(20)),
    'all wrong': (np.linspace(0, .7, 20), np.zeros(20)),
    'all correct at 1': (np.ones(20), np.ones(20)),
    'all wrong at 0': (np.zeros(20), np.zeros(20)),
    'single event': (np.array([.4]), np.array([1])),
    'constant conf': (np.full(20, .35), np.arange(20) % 3 == 0),
    'constant conf float32': (np.full(20, .35, np.float32), np.arange(20) % 2 == 0),
}
