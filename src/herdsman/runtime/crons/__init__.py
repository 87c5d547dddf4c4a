"""Crons: scheduled runs, their store and the scheduler that fires them."""
