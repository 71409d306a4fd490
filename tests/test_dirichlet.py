"""Dirichlet calibration (Kull et al. 2019) and the score-matrix recalibrator plugin kind: library, report, CLI."""
import contextlib, io, json
import numpy as np, pandas as pd, pytest
from scipy.special import log_softmax, softmax
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
import calibkit
from calibkit.cli import EX_USAGE, main
from calibkit.inputs import load_scores, read_scores
from calibkit.multiclass import DirichletCalibration, TemperatureScaling, VectorScaling, nll
from calibkit.report import calibration_report, is_matrix_recalibrator


def data(n=600, k=4, seed=0):
    "Logits whose labels are drawn from a linear map of them that is not a scaling: off-diagonal terms matter."
    r = np.random.default_rng(seed)
    Z = r.normal(0, 2, (n, k))
    M = np.eye(k) + 0.6 * np.roll(np.eye(k), 1, axis=1)               # each label borrows from the next one's logit
    y = (softmax(log_softmax(Z, axis=1) @ M.T, axis=1).cumsum(1) > r.random((n, 1))).argmax(1)
    return Z, y


def test_unregularised_fit_is_the_reference_optimum():
    "The maximum-likelihood multinomial logistic regression on log p (scikit-learn, unpenalised) is the same model."
    Z, y = data()
    L = log_softmax(Z, axis=1)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(L, y).predict_proba(L)
    P = DirichletCalibration().fit(Z, y).transform(Z)
    assert nll(P, y) == pytest.approx(nll(ref, y), abs=1e-8)           # the same optimum of the NLL
    np.testing.assert_allclose(P, ref, atol=1e-5)                      # and the same probabilities


def test_it_contains_vector_and_temperature_scaling_of_log_probabilities():
    Z, y = data(seed=1)
    L = log_softmax(Z, axis=1)
    train = {'dirichlet': nll(DirichletCalibration().fit(Z, y).transform(Z), y),
             'vector': nll(VectorScaling().fit(L, y).transform(L), y),
             'temperature': nll(TemperatureScaling().fit(L, y).transform(L), y)}
    assert train['dirichlet'] <= train['vector'] + 1e-9 <= train['temperature'] + 2e-9
    assert train['dirichlet'] < train['vector'] - 1e-3                 # the off-diagonal terms of the data are found


def test_logits_and_their_probabilities_give_the_same_map():
    Z, y = data(seed=2)
    a = DirichletCalibration(reg_lambda=0.1, reg_mu=0.1).fit(Z, y).transform(Z)
    b = DirichletCalibration(reg_lambda=0.1, reg_mu=0.1).fit(softmax(Z, axis=1), y).transform(softmax(Z, axis=1))
    np.testing.assert_allclose(a, b, atol=1e-7)


def test_odir_shrinks_off_diagonal_and_intercepts_only_and_l2_shrinks_everything():
    Z, y = data(seed=3)
    odir = DirichletCalibration(reg_lambda=1e7, reg_mu=1e7).fit(Z, y)
    off = ~np.eye(4, dtype=bool)
    assert np.abs(odir.coef_[off]).max() < 1e-4 and np.abs(odir.intercept_).max() < 1e-4
    assert np.diag(odir.coef_).min() > 0.5                             # the diagonal is not penalised
    flat = DirichletCalibration(reg_lambda=1e7).fit(Z, y)              # plain L2 on every parameter: towards 0
    np.testing.assert_allclose(flat.transform(Z), 0.25, atol=1e-4)     # W = 0, b = 0: the uniform distribution


def test_penalised_objective_has_zero_gradient_at_the_fit():
    "The fitted ODIR parameters are a stationary point of the paper's objective, by central differences."
    Z, y = data(n=300, k=3, seed=4)
    lam, mu, k = 0.5, 0.2, 3
    d = DirichletCalibration(reg_lambda=lam, reg_mu=mu).fit(Z, y)
    Wb = np.c_[d.coef_, d.intercept_]
    off = ~np.eye(k, dtype=bool)
    def objective(Wb):
        P = softmax(log_softmax(Z, axis=1) @ Wb[:, :k].T + Wb[:, k], axis=1)
        return nll(P, y) + lam / (k * (k - 1)) * (Wb[:, :k][off] ** 2).sum() + mu / k * (Wb[:, k] ** 2).sum()
    h, e = 1e-6, np.eye(k * (k + 1)).reshape(-1, k, k + 1)
    grad = [(objective(Wb + h * u) - objective(Wb - h * u)) / (2 * h) for u in e]
    np.testing.assert_allclose(grad, 0, atol=1e-6)


def test_scikit_learn_estimator_pipeline_and_grid_search():
    Z, y = data(seed=5)
    est = DirichletCalibration(reg_mu=0.1)
    assert clone(est).get_params() == {'input': 'auto', 'max_iter': 1000, 'reg_lambda': 0.0, 'reg_mu': 0.1}
    pipe = make_pipeline(FunctionTransformer(lambda X: 2 * X), DirichletCalibration())
    np.testing.assert_allclose(pipe.fit(Z, y).transform(Z), DirichletCalibration().fit(2 * Z, y).transform(2 * Z))
    grid = GridSearchCV(est, {'reg_lambda': [1e-3, 1e3]}, scoring=lambda m, X, y_: -nll(m.transform(X), y_), cv=2)
    grid.fit(Z, y)
    assert grid.best_params_['reg_lambda'] in (1e-3, 1e3) and len(grid.cv_results_['mean_test_score']) == 2
    with pytest.raises(NotFittedError): DirichletCalibration().transform(Z)
    with pytest.raises(ValueError, match='reg_lambda'): DirichletCalibration(reg_lambda=-1.0).fit(Z, y)
    with pytest.raises(ValueError, match='reg_mu'): DirichletCalibration(reg_mu=np.nan).fit(Z, y)
    with pytest.raises(ValueError, match='fitted on 4'): DirichletCalibration().fit(Z, y).transform(Z[:, :3])


def test_score_matrix_recalibrators_are_registered():
    t = calibkit.list_plugins()
    assert sorted(t.name[t.kind == 'matrix_recalibrator']) == ['dirichlet', 'temperature', 'vector']
    d = calibkit.matrix_recalibrator('dirichlet', reg_lambda=0.5)
    assert isinstance(d, DirichletCalibration) and d.reg_lambda == 0.5
    assert (is_matrix_recalibrator('dirichlet'), is_matrix_recalibrator('isotonic'), is_matrix_recalibrator(d)) == \
        (True, False, True)


def write_npz(path, n, seed):
    "An over-confident 5-label score matrix (squared and renormalised rows) with gold ids drawn from the rows."
    r = np.random.default_rng(seed)
    p = r.dirichlet(np.ones(5) * 0.7, n)
    gold = (p.cumsum(1) > r.random((n, 1))).argmax(1)
    q = p ** 2 / (p ** 2).sum(1, keepdims=True)
    np.savez(path, scores=q, gold=gold)


def run(*argv) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err): code = main([*map(str, argv)])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize('name, params', [('dirichlet', {'reg_lambda': 0.01, 'reg_mu': 0.01}), ('vector', {}),
                                          ('temperature', {})])
def test_cli_route_equals_the_python_route(tmp_path, name, params):
    write_npz(tmp_path/'dev.npz', 400, 0); write_npz(tmp_path/'test.npz', 400, 1)
    flags = [x for k, v in params.items() for x in ('--param', f'{k}={v}')]
    code, out, err = run('report', tmp_path/'test.npz', '--fit', tmp_path/'dev.npz', '--recalibrator', name, *flags,
                         '--json', '--n-samples', 20, '--quiet')
    assert code == 0, err
    cli = json.loads(out)
    (pf, gf, _), (pe, ge, labels) = (load_scores(tmp_path/f) for f in ('dev.npz', 'test.npz'))
    lib = calibration_report(read_scores(tmp_path/'test.npz'), fit=read_scores(tmp_path/'dev.npz'), recalibrator=name,
                             params=params or None, n_samples=20, scores=dict(fit=(pf, gf), events=(pe, ge), labels=labels))
    got = pd.DataFrame(cli['metrics']).set_index(['stage', 'key']).estimate
    want = lib.metrics.set_index(['stage', 'key']).estimate
    assert list(got.index) == list(want.index)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12, atol=1e-15)   # float64 rounding
    rec = calibkit.matrix_recalibrator(name, **params).fit(pf, gf)
    after = calibration_report(calibkit.events_from_scores(rec.transform(pe), ge, labels=labels), n_samples=20)
    assert got['after', 'calib_mse'] == pytest.approx(after.metrics.set_index('key').estimate['calib_mse'], rel=1e-12)
    assert got['after', 'calib_mse'] < got['before', 'calib_mse'] / 2       # the over-confidence is undone
    assert cli['meta']['recalibrator'] == name


def test_cli_param_reaches_the_recalibrator(tmp_path):
    write_npz(tmp_path/'dev.npz', 300, 2); write_npz(tmp_path/'test.npz', 300, 3)
    res = [json.loads(run('report', tmp_path/'test.npz', '--fit', tmp_path/'dev.npz', '--recalibrator', 'dirichlet',
                          *extra, '--json', '--n-samples', 20, '--quiet')[1])['summary']['change']['after'][0]
           for extra in ([], ['--param', 'reg_lambda=1e6'])]
    assert res[0] != res[1]
    code, _, err = run('report', tmp_path/'test.npz', '--fit', tmp_path/'dev.npz', '--recalibrator', 'dirichlet',
                       '--param', 'reg_lamda=1')
    assert code == 65 and "matrix_recalibrator 'dirichlet'" in err and 'reg_lambda=0.0' in err


def test_cli_refuses_a_matrix_recalibrator_on_events(tmp_path):
    pd.DataFrame(dict(conf=[.9, .2, .7], correct=[1, 0, 1])).to_csv(tmp_path/'ev.csv', index=False)
    code, out, err = run('report', tmp_path/'ev.csv', '--fit', tmp_path/'ev.csv', '--recalibrator', 'dirichlet')
    assert (code, out) == (EX_USAGE, '')
    assert err.count('\n') == 1 and err.startswith('calibkit: error: --recalibrator dirichlet recalibrates the rows of '
                                                   'score matrices, not binary events')
    assert err.rstrip().endswith('ev.csv is not one')
    code, _, err = run('report', tmp_path/'ev.csv', '--fit', tmp_path/'ev.csv', '--recalibrator', 'dirichet')
    assert code == EX_USAGE and 'known recalibrators: beta' in err and 'on score matrices also dirichlet' in err


def test_report_refuses_mismatched_arguments():
    ev = pd.DataFrame(dict(conf=[.9, .2, .7], correct=[1, 0, 1]))
    with pytest.raises(ValueError, match="recalibrator 'dirichlet' recalibrates score matrices: it needs scores"):
        calibration_report(ev, fit=ev, recalibrator='dirichlet')
    P, g = np.array([[.9, .1], [.3, .7]]), np.array([0, 1])
    with pytest.raises(ValueError, match="recalibrator is 'isotonic'"):
        calibration_report(ev, fit=ev, recalibrator='isotonic', scores=dict(fit=(P, g), events=(P, g)))
