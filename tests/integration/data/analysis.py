# A small data analysis with Python's data stack: run in a kiln guest booted
# from the base image and on the host in a chroot of the same image root;
# the output must be identical (tests/integration/cases/image.sh).
#
#   python3 analysis.py [PNG_PATH]   (default /tmp/chart.png)
import hashlib
import logging
import sys

# Without a font cache (every fresh guest) matplotlib builds one and, if that
# takes over 5 s, says so: not part of the output to compare.
logging.getLogger("matplotlib").setLevel(logging.ERROR)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/chart.png"
rng = np.random.default_rng(20240229)
n = 2000
df = pd.DataFrame(
    {
        "city": rng.choice(["Oslo", "Lima", "Pune", "Kyiv", "Perth"], size=n),
        "temp": rng.normal(15.0, 8.0, size=n).round(2),
        "rain": rng.gamma(2.0, 3.0, size=n).round(2),
        "day": rng.integers(1, 366, size=n),
    }
)
df["month"] = (df["day"] - 1) // 31 + 1

pd.set_option("display.width", 120)
pd.set_option("display.max_columns", 20)
print(df.describe().round(4).to_string())
by_city = df.groupby("city").agg(
    n=("temp", "size"), temp_mean=("temp", "mean"), temp_std=("temp", "std"), rain_sum=("rain", "sum")
)
print(by_city.round(4).to_string())
pivot = df.pivot_table(index="month", columns="city", values="temp", aggfunc="median")
print(pivot.round(3).to_string())
corr = df[["temp", "rain", "day"]].corr()
print(corr.round(6).to_string())
print("quantiles", np.quantile(df["rain"].to_numpy(), [0.1, 0.5, 0.9]).round(6).tolist())

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.5), dpi=80)
for city, g in df.groupby("city"):
    m = g.groupby("month")["temp"].mean()
    ax1.plot(m.index, m.values, marker="o", label=city)
ax1.set_xlabel("month")
ax1.set_ylabel("mean temperature")
ax1.legend(fontsize=7)
ax2.hist(df["rain"], bins=30, color="tab:blue")
ax2.set_xlabel("rain")
fig.tight_layout()
fig.savefig(out, metadata={"Software": None})

with open(out, "rb") as f:
    head = f.read(8)
pixels = mpimg.imread(out)
print("png", head == b"\x89PNG\r\n\x1a\n", pixels.shape, pixels.dtype)
print("pixels sha256", hashlib.sha256(np.ascontiguousarray(pixels).tobytes()).hexdigest())
print("ink", round(float(1.0 - pixels[..., :3].mean()), 6))
