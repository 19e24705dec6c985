# ruff: noqa  (an evaluation set's counter, kept as the gatherer wrote it apart from the code)
"""Count explain answers on the sealed set whose printed fix/cause still holds an unfilled <placeholder>.
Usage: placeholders.py TREE CASES [PYTHON]  -> prints aggregate counts only."""
import sys,os,re,json,subprocess,tempfile,tomllib,concurrent.futures as cf
tree,cases=sys.argv[1],sys.argv[2]; py=sys.argv[3] if len(sys.argv)>3 else sys.executable
cs=tomllib.load(open(cases,'rb'))['case']
PH=re.compile(r'<[a-z][a-z0-9_]*>|\{[a-z_]+\}|\bX\.Y\b')
def run(c):
    env=dict(os.environ); env['PYTHONPATH']=tree
    with tempfile.TemporaryDirectory() as d:
        p=os.path.join(d,'m.txt'); open(p,'wb').write(c['message'].encode())
        r=subprocess.run([py,'-m','cudnn_doctor','explain','--offline-only','--json','--from-file',p],capture_output=True,env=env,cwd=d,timeout=60)
    try: data=json.loads(r.stdout)
    except Exception: return c['family'],None
    ms=data.get('matches') or []
    first=[m for m in ms[:1] if isinstance(m,dict)]
    allm=[m for m in ms if isinstance(m,dict)]
    f1=any(PH.search(str(m.get('fix',''))+' '+str(m.get('cause',''))) for m in first)
    fa=any(PH.search(str(m.get('fix',''))+' '+str(m.get('cause',''))) for m in allm)
    return c['family'],(bool(ms),f1,fa)
with cf.ThreadPoolExecutor(4) as ex: res=list(ex.map(run,cs))
rel=[r for f,r in res if f!='unrelated' and r]
print(f"placeholders: related answers {sum(r[0] for r in rel)}, first match with unfilled <placeholder> {sum(r[1] for r in rel)}, any match with unfilled <placeholder> {sum(r[2] for r in rel)}, no JSON {sum(1 for f,r in res if r is None)}")
