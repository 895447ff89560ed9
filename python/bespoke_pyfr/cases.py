"""Small 3-D PyFR cases: a periodic box of tetrahedra or of prisms.

    python3 -m bespoke_pyfr.cases tet|pri N ORDER OUTDIR [--steps S]
                                  [--precision single|double]

writes OUTDIR/mesh.msh (Gmsh 2.2 ASCII, which `pyfr import` reads) and
OUTDIR/case.ini: the Euler equations on [-1, 1]^3, periodic in x, y and z,
a density wave advected by a uniform flow (smooth, so any order from p1 to
p6 runs), S steps of RK4 and one solution written at the end.  The box is
N^3 cubes, each cut into 6 tetrahedra (the same diagonal in every cube, so
faces conform and opposite boundaries match) or into 2 prisms.
Standard library and numpy only.
"""
import argparse
from itertools import permutations
from pathlib import Path

import numpy as np

GMSH_TYPE = {'tet': 4, 'pri': 6, 'tri': 2, 'quad': 3}
# Each element type's faces as node indices (Gmsh order)
FACES = {
    'tet': [(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)],
    'pri': [(0, 1, 2), (3, 4, 5), (0, 1, 4, 3), (1, 2, 5, 4), (2, 0, 3, 5)]
}


def box(etype, n):
    """Nodes (N+1)^3 x 3 on [-1, 1]^3 and the elements' node indices."""
    g = np.linspace(-1, 1, n + 1)
    nodes = np.array([(x, y, z) for z in g for y in g for x in g])

    def nid(i, j, k):
        return i + (n + 1)*(j + (n + 1)*k)

    eles = []
    for i in range(n):
        for j in range(n):
            for k in range(n):
                if etype == 'tet':
                    # Kuhn's cut: one tetrahedron per order of the axes
                    for perm in permutations(range(3)):
                        p, path = [i, j, k], [nid(i, j, k)]
                        for ax in perm:
                            p[ax] += 1
                            path.append(nid(*p))
                        eles.append(path)
                else:
                    a, b = nid(i, j, k), nid(i + 1, j, k)
                    c, d = nid(i + 1, j + 1, k), nid(i, j + 1, k)
                    up = (n + 1)**2
                    eles.append([a, b, c, a + up, b + up, c + up])
                    eles.append([a, c, d, a + up, c + up, d + up])
    eles = np.array(eles)

    if etype == 'tet':
        # Positive volume: swap two nodes where the orientation is negative
        x = nodes[eles]
        vol = np.einsum('ij,ij->i', np.cross(x[:, 1] - x[:, 0],
                                             x[:, 2] - x[:, 0]),
                        x[:, 3] - x[:, 0])
        neg = vol < 0
        eles[neg, 1], eles[neg, 2] = eles[neg, 2], eles[neg, 1].copy()
    return nodes, eles


def boundary_faces(etype, nodes, eles):
    """{physical name: [face node lists]} of the faces on the box's sides."""
    seen = {}
    for e in eles:
        for f in FACES[etype]:
            face = [int(e[v]) for v in f]
            key = tuple(sorted(face))
            seen[key] = None if key in seen else face
    out = {}
    for face in filter(None, seen.values()):
        x = nodes[face]
        for ax in range(3):
            for side, val in (('l', -1.0), ('r', 1.0)):
                if np.allclose(x[:, ax], val):
                    out.setdefault(f'periodic_{ax}_{side}', []).append(face)
    return out


def write_msh(path, etype, nodes, eles, bfaces):
    names = sorted(bfaces)
    lines = ['$MeshFormat', '2.2 0 8', '$EndMeshFormat', '$PhysicalNames',
             str(len(names) + 1)]
    lines += [f'2 {i + 2} "{nm}"' for i, nm in enumerate(names)]
    lines += ['3 1 "fluid"', '$EndPhysicalNames', '$Nodes', str(len(nodes))]
    lines += [f'{i + 1} {x!r} {y!r} {z!r}'
              for i, (x, y, z) in enumerate(nodes.tolist())]
    lines += ['$EndNodes', '$Elements']
    body, eid = [], 1
    for i, nm in enumerate(names):
        for face in bfaces[nm]:
            ft = GMSH_TYPE['tri' if len(face) == 3 else 'quad']
            body.append(f'{eid} {ft} 2 {i + 2} {i + 2} ' +
                        ' '.join(str(v + 1) for v in face))
            eid += 1
    for e in eles:
        body.append(f'{eid} {GMSH_TYPE[etype]} 2 1 1 ' +
                    ' '.join(str(v + 1) for v in e))
        eid += 1
    lines += [str(len(body))] + body + ['$EndElements']
    Path(path).write_text('\n'.join(lines) + '\n')


def write_ini(path, order, nsteps, dt, precision):
    tend = nsteps*dt
    Path(path).write_text(f'''[backend]
precision = {precision}

[constants]
gamma = 1.4

[solver]
system = euler
order = {order}

[solver-time-integrator]
scheme = rk4
controller = none
tstart = 0.0
tend = {tend!r}
dt = {dt!r}

[solver-interfaces]
riemann-solver = rusanov

[solver-interfaces-tri]
flux-pts = williams-shunn

[solver-interfaces-quad]
flux-pts = gauss-legendre

[solver-elements-tet]
soln-pts = shunn-ham

[solver-elements-pri]
soln-pts = williams-shunn~gauss-legendre

[soln-plugin-writer]
dt-out = {tend!r}
basedir = .
basename = soln-{{n:04d}}

[soln-ics]
rho = 1 + 0.2*sin(pi*(x + y + z))
u = 1
v = 0.5
w = 0.25
p = 1
''')


def main(argv=None):
    ap = argparse.ArgumentParser(prog='python3 -m bespoke_pyfr.cases',
                                 description=__doc__.split('\n')[0])
    ap.add_argument('etype', choices=['tet', 'pri'])
    ap.add_argument('n', type=int, help='cubes along each side')
    ap.add_argument('order', type=int, choices=range(1, 7),
                    metavar='ORDER', help='polynomial order, 1 to 6')
    ap.add_argument('outdir')
    ap.add_argument('--steps', type=int, default=10)
    ap.add_argument('--precision', choices=['single', 'double'],
                    default='double')
    args = ap.parse_args(argv)
    if args.n < 1 or args.steps < 1:
        ap.error('N and --steps must be positive')

    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    nodes, eles = box(args.etype, args.n)
    write_msh(out / 'mesh.msh', args.etype, nodes, eles,
              boundary_faces(args.etype, nodes, eles))
    # A stable RK4 step: the fastest wave is |u| + c < 2.4
    h = 2.0/args.n
    dt = float(f'{0.1*h/(2.4*(args.order + 1)**2):.3g}')
    write_ini(out / 'case.ini', args.order, args.steps, dt, args.precision)
    print(f'cases: {len(eles)} {args.etype} elements, p{args.order}, '
          f'{args.steps} steps of dt = {dt} -> {out}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
