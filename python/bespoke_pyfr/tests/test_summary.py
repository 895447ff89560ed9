"""The run's timing and the pyfr-check tables."""
import json
import os
import tempfile
import unittest

from bespoke_pyfr import summary
from bespoke_pyfr.timing import StepClock


class TestStepClock(unittest.TestCase):
    def test_steps(self):
        c = StepClock()
        self.assertEqual(c.summary(), {'steps': 0})
        c.step()
        c.step()
        c.step()
        c.done()
        s = c.summary()
        self.assertEqual(s['steps'], 3)
        self.assertGreaterEqual(s['setup_s'], 0)
        self.assertAlmostEqual(s['step_s'], s['run_s'] / 2)


class TestSummary(unittest.TestCase):
    def test_tables(self):
        with tempfile.TemporaryDirectory() as d:
            case = os.path.join(d, 'tet-2-5')
            ops = [
                # bespoke won
                {'m': 84, 'k': 56, 'n': 999, 'dtype': 'f64', 'beta': 0.0, 'winner': 'bespoke/dmma/x',
                 'times': {'cublaslt': 2e-5, 'bespoke/dmma/x': 1e-5}},
                # cuBLASLt won by 1 %: bespoke within 2 %
                {'m': 84, 'k': 56, 'n': 999, 'dtype': 'f64', 'beta': 1.0, 'winner': 'cublaslt',
                 'times': {'cublaslt': 1.00e-5, 'bespoke/a': 1.01e-5}},
                # GiMMiK won by 10 %
                {'m': 56, 'k': 84, 'n': 999, 'dtype': 'f64', 'beta': 0.0, 'winner': 'gimmik',
                 'times': {'gimmik': 1.0e-5, 'bespoke/a': 1.1e-5}},
            ]
            for r, run in [('stock', {'steps': 10, 'setup_s': 20.0, 'step_s': 2e-3}),
                           ('cold', {'steps': 10, 'setup_s': 30.0, 'step_s': 1e-3}),
                           ('warm', {'steps': 10, 'setup_s': 4.0, 'step_s': 1e-3})]:
                os.makedirs(os.path.join(case, r))
                with open(os.path.join(case, r, 'report.json'), 'w') as f:
                    json.dump({'run': run, 'operators': ops if r != 'stock' else []}, f)
            with open(os.path.join(case, 'result.txt'), 'w') as f:
                f.write('tet:2:5 double PASS\n')
            cases = summary.case_rows(d)
            self.assertEqual([o['bespoke_ok'] for o in cases[0]['operators']], [True, True, False])
            md = summary.markdown(cases)
            self.assertIn('2 of 3 operators', md)
            self.assertIn('| 20 %', md)        # warm set-up ÷ stock's
            self.assertIn('2×', md)            # time per step


if __name__ == '__main__':
    unittest.main()
