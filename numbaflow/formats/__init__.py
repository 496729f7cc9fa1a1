"""Other frameworks' file formats: Paddle's inference model (`paddle_model`, over the
ProgramDesc schema in `paddle_proto`) and Paddle's tensor stream (`.pdiparams`)."""
