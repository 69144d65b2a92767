import sys, json, numpy as np, pickle
sys.path[:0]=[".","docs/results/costmodel/machine-60"]
import trees as T
from llmopt.poly.costmodel.model import load_model, predict_trees
import argparse, subprocess
D=subprocess.check_output(["bash","-c","source docs/results/costmodel/fcaa_recipe.sh && folder_at 3f5a413"],text=True).strip()
args=argparse.Namespace(data=D,cache="runs/s59/base-s0/features.pkl",matrices="runs/s60/all",plain=False,all_training_rows=True)
tr,va,te=T.load_parts(args)
blob=np.load("runs/s60/trees-all-255x3.npz")
ts=blob["test"]; tv=blob["validation"]
m,_=load_model("runs/s59/base-ens4.pt")
ns=np.log(predict_trees(m,te.trees))
pickle.dump(dict(ts=ts,tv=tv,ns=ns,nv=np.log(predict_trees(m,va.trees)),yt=te.y,yv=va.y,rows_t=te.rows,rows_v=va.rows,ytr=tr.y,rows_tr=tr.rows),open("runs/s61/probe/ans.pkl","wb"))
