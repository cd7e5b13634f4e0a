import csv,collections,sys
d=collections.defaultdict(lambda:[0,0])
for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')):
    n=r['Kernel Name'][:60]; d[n][0]+=float(r['Metric Value'].replace(',',''))/1e3; d[n][1]+=1
tot=sum(v[0] for v in d.values()); print(f"total {tot:.0f} us")
for k,v in sorted(d.items(),key=lambda x:-x[1][0])[:25]: print(f"{v[0]:8.0f} us {v[1]:4d}  {k}")
