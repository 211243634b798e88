"""Signal processing shared by the corpus builders (:mod:`interbias.corpora`) and the operators
(:mod:`interbias.operators`), so that both measure levels and stretch time the same way:

- :mod:`~interbias.dsp.level`: active-speech detector and levels, exact SNR mixing;
- :mod:`~interbias.dsp.wsola`: WSOLA time-scale modification (pitch kept);
- :mod:`~interbias.dsp.rooms`: shoebox room simulation, RT60 measurement, direct-path onset;
- :mod:`~interbias.dsp.resample`: the resamplers (polyphase, torchaudio's sinc).
"""
