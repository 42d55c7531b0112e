#!/usr/bin/env python3
"""A stand-in model for scripts/demo.sh when no LLM provider is configured: a local server speaking
the OpenAI chat-completions protocol that replays a fixed CodeAct trajectory for the demo task
(make sales.csv, fit a trend, plot it, answer). Prints its --model flag, then serves until killed."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "cli"))
from scripted_model import ScriptedModel, python_turn  # noqa: E402

STEPS = [
    python_turn("call_1", """import numpy as np, pandas as pd
rng = np.random.default_rng(7)
months = pd.period_range("2025-01", periods=18, freq="M").astype(str)
sales = (1000 + 55 * np.arange(18) + rng.normal(0, 60, 18)).round(1)
pd.DataFrame({"month": months, "sales": sales}).to_csv("/output/sales.csv", index=False)
df = pd.read_csv("/output/sales.csv")
df.tail(3)"""),
    python_turn("call_2", """slope, intercept = np.polyfit(np.arange(len(df)), df.sales, 1)
print(f"trend: {slope:+.1f} per month, starting at {intercept:.0f}")
round(slope, 1)"""),
    python_turn("call_3", """import matplotlib.pyplot as plt
fig, ax = plt.subplots(figsize=(8, 4))
ax.plot(df.month, df.sales, "o-", label="sales")
ax.plot(df.month, intercept + slope * np.arange(len(df)), "--", label=f"trend {slope:+.1f}/month")
ax.set_xticks(df.month[::3]); ax.legend(); fig.tight_layout()
fig.savefig("/output/trend.png")
"saved /output/trend.png\""""),
    {"content": "Sales grow by about 55 a month. The data is in /output/sales.csv and the plot with the "
                "fitted trend in /output/trend.png."},
]

if __name__ == "__main__":
    model = ScriptedModel(STEPS)
    print(model.model_flag, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        model.close()
