#!/usr/bin/env python3
"""imgreg on photographs: pairs moved by known rigid transforms, and the share soac registers.

  scripts/imgreg-photos.py make OUT [--photos A,B,...] [--crop central|random] [--small N] [--large N]
                                    [--noise SIGMA] [--seed S]
  scripts/imgreg-photos.py run OUT [--soac build/cli/soac] [--backend host] [--jobs N]

`make` writes OUT/{small,large}/NAME-{crop,whole}-K/{fixed.png,moving.png,truth.json}, as
`soac gen imgreg --format image` writes a pair. For each photograph (a scikit-image sample name such
as `brick` or `astronaut`, or an image file) it takes two views: a crop (the central half of each
side, or with --crop random 40-60% of each side at a random place) and the whole image. Each view is
the fixed image; its moving copy is the photograph resampled (cubic spline) under a transform
drawn at random, with the source's surroundings where the crop has them and black beyond the
photograph's edges (the "empty corners" of a rotated whole image). Both get independent Gaussian
noise. Transforms: --small N of 2-8 degrees either way and 3.5-17 pixels in a random direction,
--large N of 20 degrees either way and 30 pixels.

`run` registers every pair with `soac run imgreg --format image`, checks it with `soac validate`
against truth.json (0.5 pixel and 0.1 degree) and prints the failures and, per kind, how many pass,
the histograms per registration and the registration times (decoding excluded).

Needs numpy, scipy and scikit-image (pip install scikit-image: its wheel carries the samples).
Geometry as apps/imgreg/imgreg.hpp: fixed point p maps to moving point q = R(a)(p - c) + c + t,
c = ((W - 1) / 2, (H - 1) / 2), so moving(q) = source(R(-a)(q - c - t) + c).
"""
import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import tempfile

DEFAULT_PHOTOS = 'astronaut,brick,camera,chelsea,coffee,grass,gravel,rocket,motorcycle_left,coins,moon,retina'


def grey_photo(name):
    """A photograph as float grey levels: an image file, or a scikit-image sample by name (a file of
    its data folder, such as motorcycle_left, or a loader of skimage.data)."""
    import glob
    import numpy as np
    import skimage.data
    import skimage.io
    from skimage.color import rgb2gray
    if os.path.exists(name):
        image = skimage.io.imread(name)
    else:
        files = sorted(glob.glob(os.path.join(os.path.dirname(skimage.data.__file__), name + '.*')))
        image = skimage.io.imread(files[0]) if files else getattr(skimage.data, name)()
    if image.ndim == 3:
        image = rgb2gray(image[..., :3]) * 255.0
    image = image.astype(np.float64)
    if max(image.shape) > 800:  # the retina's 1411 x 1411: 2 x 2 means, to keep the host runs short
        h, w = image.shape[0] // 2 * 2, image.shape[1] // 2 * 2
        image = image[:h, :w].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    return image


def moved(source, origin, shape, t, angle_deg):
    """The moving image of the view at `origin` (row, column) of `shape` in `source`."""
    import numpy as np
    from scipy import ndimage
    h, w = shape
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    a = np.deg2rad(angle_deg)
    qy, qx = np.mgrid[0:h, 0:w].astype(np.float64)
    dx, dy = qx - cx - t[0], qy - cy - t[1]
    px = np.cos(a) * dx + np.sin(a) * dy + cx
    py = -np.sin(a) * dx + np.cos(a) * dy + cy
    return ndimage.map_coordinates(source, [py + origin[0], px + origin[1]], order=3, mode='constant', cval=0.0)


def draw_transforms(rng, kind, n):
    out = []
    for _ in range(n):
        if kind == 'small':
            angle = rng.uniform(2, 8) * rng.choice([-1, 1])
            shift = rng.uniform(3.5, 17)
        else:
            angle = 20.0 * rng.choice([-1, 1])
            shift = 30.0
        direction = rng.uniform(0, 2 * math.pi)
        out.append((shift * math.cos(direction), shift * math.sin(direction), angle))
    return out


def make(args):
    import numpy as np
    import skimage.io
    rng = np.random.default_rng(args.seed)
    count = 0
    for name in args.photos.split(','):
        source = grey_photo(name)
        H, W = source.shape
        stem = os.path.splitext(os.path.basename(name))[0]
        if args.crop == 'central':
            crop = ((H // 4, W // 4), (H // 2, W // 2))
        else:
            f = rng.uniform(0.4, 0.6)
            ch, cw = int(H * f), int(W * f)
            crop = ((int(rng.uniform(0.1, 0.9) * (H - ch)), int(rng.uniform(0.1, 0.9) * (W - cw))), (ch, cw))
        for view, (origin, shape) in (('crop', crop), ('whole', ((0, 0), (H, W)))):
            fixed = source[origin[0]:origin[0] + shape[0], origin[1]:origin[1] + shape[1]]
            for kind, n in (('small', args.small), ('large', args.large)):
                for k, (tx, ty, angle) in enumerate(draw_transforms(rng, kind, n)):
                    pair = os.path.join(args.out, kind, f'{stem}-{view}-{k:02d}')
                    os.makedirs(pair, exist_ok=True)
                    for file, image in (('fixed.png', fixed), ('moving.png', moved(source, origin, shape, (tx, ty), angle))):
                        grey = np.clip(np.rint(image + rng.normal(0, args.noise, image.shape)), 0, 255).astype(np.uint8)
                        skimage.io.imsave(os.path.join(pair, file), grey, check_contrast=False)
                    with open(os.path.join(pair, 'truth.json'), 'w') as f:
                        json.dump({'tx': tx, 'ty': ty, 'angle_deg': angle, 'photo': name, 'view': view,
                                   'crop': [list(origin), list(shape)]}, f, indent=2)
                    count += 1
    print(f'{count} pairs in {args.out}')


def register(soac, backend, pair, results):
    result = os.path.join(results, os.path.basename(os.path.dirname(pair)) + '-' + os.path.basename(pair))
    fixed, moving, truth = (os.path.join(pair, f) for f in ('fixed.png', 'moving.png', 'truth.json'))
    run = subprocess.run([soac, 'run', 'imgreg', '--backend', backend, '--format', 'image', '-i', fixed, '-i', moving,
                          '-o', result], capture_output=True, text=True)
    record = {'pair': pair, 'ok': False}
    if run.returncode != 0:
        record['error'] = (run.stdout + run.stderr).strip()
        return record
    with open(os.path.join(result, 'manifest.json')) as f:
        info = json.load(f)['info']
    record.update(transform=info['transform'], histograms=info['evaluations'], ms=info['registration_ms'])
    check = subprocess.run([soac, 'validate', 'imgreg', '--format', 'image', '-i', fixed, '-i', moving, '-i', truth,
                            '-r', result], capture_output=True, text=True)
    record['ok'] = check.returncode == 0
    if not record['ok']:
        record['error'] = (check.stdout + check.stderr).strip().splitlines()[-1]
    return record


def run(args):
    pairs = sorted(os.path.join(args.out, kind, p) for kind in ('small', 'large')
                   if os.path.isdir(os.path.join(args.out, kind)) for p in os.listdir(os.path.join(args.out, kind)))
    if not pairs:
        sys.exit(f'imgreg-photos: no pairs under {args.out} (make them first)')
    with tempfile.TemporaryDirectory() as results, concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        records = list(pool.map(lambda p: register(args.soac, args.backend, p, results), pairs))
    for r in records:
        if not r['ok']:
            print(f"FAIL {r['pair']}: {r.get('error', '')}")
    for kind in ('small', 'large'):
        mine = [r for r in records if os.path.basename(os.path.dirname(r['pair'])) == kind]
        if not mine:
            continue
        done = [r for r in mine if 'ms' in r]
        ok = sum(r['ok'] for r in mine)
        mean = lambda key: sum(r[key] for r in done) / max(1, len(done))
        print(f'{kind}: {ok}/{len(mine)} within 0.5 px and 0.1 deg; {mean("histograms"):.0f} histograms and '
              f'{mean("ms"):.0f} ms per registration on average')
    return 0 if all(r['ok'] for r in records) else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='command', required=True)
    m = sub.add_parser('make', help='write the pairs')
    m.add_argument('out')
    m.add_argument('--photos', default=DEFAULT_PHOTOS, help='scikit-image sample names or image files, comma-separated')
    m.add_argument('--crop', choices=('central', 'random'), default='central')
    m.add_argument('--small', type=int, default=12, help='small and medium transforms per view')
    m.add_argument('--large', type=int, default=3, help='20-degree, 30-pixel transforms per view')
    m.add_argument('--noise', type=float, default=2.0, help='grey levels (standard deviation)')
    m.add_argument('--seed', type=int, default=20240607)
    r = sub.add_parser('run', help='register and validate every pair')
    r.add_argument('out')
    r.add_argument('--soac', default='build/cli/soac')
    r.add_argument('--backend', default='host')
    r.add_argument('--jobs', type=int, default=1)
    args = parser.parse_args()
    if args.command == 'make':
        make(args)
        return 0
    return run(args)


if __name__ == '__main__':
    sys.exit(main())
