import pickle, numpy as np, collections, sys
d=pickle.load(open("runs/s61/probe/ans.pkl","rb"))
f=np.load(sys.argv[1]); y=d["yt"]; t=f["t"]; ns=d["ns"]
for name,b in (("trees",t),("blend0.8",0.8*t+0.2*d["ns"])):
    e=np.abs(np.exp(b)-y)/y; print(name, e.mean())
    bins=[0,0.3,0.6,0.9,1.1,1.5,3,100]
    for i in range(len(bins)-1):
        s=(y>=bins[i])&(y<bins[i+1]); print(f"  {bins[i]}-{bins[i+1]} n={s.sum()} mape={e[s].mean():.3f} share={e[s].sum()/e.sum():.3f} over={np.mean(np.exp(b[s])>y[s]):.2f}")
    L=np.array([min(len(r["schedule"]),4) for r in d["rows_t"]])
    print("  by length", [round(e[L==k].mean(),3) for k in range(5)])
