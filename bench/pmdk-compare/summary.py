import sys,statistics,collections
d=collections.defaultdict(list)
for line in open(sys.argv[1]):
    p=line.split()
    if p[0]=='round' or len(p)<4: continue
    try: d[(p[0],p[1]+' '+p[2])].append(float(p[3]))
    except ValueError: pass
rows=sorted({k[0] for k in d})
print(f"{'row':14} {'PMDK':>10} {'rpmem s':>10} {'rpmem t':>10}  ratio s / t (PMDK/rpmem for time; rpmem/PMDK for ops)  n")
for r in rows:
    m={lib:statistics.median(d[(r,lib)]) if d[(r,lib)] else float('nan') for lib in ('pmdk sockets','rpmem sockets','rpmem tcp')}
    ops=r.endswith('ops')
    f=(lambda x: x/m['pmdk sockets']) if ops else (lambda x: m['pmdk sockets']/x if x else float('nan'))
    print(f"{r:14} {m['pmdk sockets']:10.1f} {m['rpmem sockets']:10.1f} {m['rpmem tcp']:10.1f}  {f(m['rpmem sockets']):.2f} / {f(m['rpmem tcp']):.2f}   {len(d[(r,'pmdk sockets')])}")
