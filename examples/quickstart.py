"""The smallest program that stores a conversation in Engram and asks about it, with the official
Python SDK (`pip install honcho-ai`). Engram must be running (`npm start`) with a model configured
for the question (README, "Reasoning"). Run it: python3 examples/quickstart.py
"""
import os

from honcho import Honcho

honcho = Honcho(
    base_url=os.environ.get("ENGRAM_URL", "http://127.0.0.1:8000"),
    workspace_id="demo",
    # any text while AUTH_USE_AUTH is off; a key from `npm run token` when it is on
    api_key=os.environ.get("ENGRAM_KEY", "unused-when-auth-is-off"),
)

alice = honcho.peer("alice")
bot = honcho.peer("bot")
session = honcho.session("quickstart")
session.add_messages([alice.message("I just moved to Lisbon"), bot.message("Welcome! How do you like it so far?")])

print(bot.chat("Where does Alice live?", target=alice))
